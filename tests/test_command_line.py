"""plax's command-line entry points: `python -m plax.errors NAME` prints the errors
reference's entry from the installed package; `python -m plax.extend` prints the
primitive coverage table, has `--help`, and ends quietly when its reader goes away."""
import subprocess
import sys

import pytest

import plax
from plax._src.errors import reference_entries, reference_entry
from plax.errors import _main as errors_main


def test_every_error_message_names_a_reference_entry():
    with pytest.raises(plax.errors.TracerBoolConversionError) as info:
        plax.jit(lambda x: 1 if x > 0 else 0)(1.0)
    pointer = str(info.value).splitlines()[-1]
    assert pointer == ("Run `python -m plax.errors TracerBoolConversionError` for what causes "
                       "it and the fixes.")
    assert reference_entry("TracerBoolConversionError").startswith("## tracerboolconversionerror")


def test_errors_main_prints_entries_and_lists_them(capsys):
    assert errors_main(["KeyReuseError", "buffer-donation"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("## keyreuseerror") and "\n## buffer-donation\n" in out
    assert "## concretizationtypeerror" not in out
    assert errors_main([]) == 0
    listing = capsys.readouterr().out
    assert listing.startswith("usage: python -m plax.errors NAME")
    assert all(f"  {name}\n" in listing for name in ("unexpectedtracererror", "buffer-donation"))


def test_errors_main_names_the_entries_for_an_unknown_name(capsys):
    assert errors_main(["TracerBoolError"]) == 2
    err = capsys.readouterr().err
    assert "no entry 'TracerBoolError'" in err and "tracerboolconversionerror" in err
    assert set(reference_entries()) >= {"jaxruntimeerror", "simplifiedtraceback"}


def _run(args, cwd, **kwargs):
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120, **kwargs)


def test_modules_run_from_another_directory(tmp_path):
    entry = _run(["plax.errors", "overflowerror"], tmp_path)
    assert entry.returncode == 0 and entry.stdout.startswith("## overflowerror"), entry.stderr
    usage = _run(["plax.extend", "--help"], tmp_path)
    assert usage.returncode == 0 and usage.stdout.startswith("usage: python -m plax.extend")
    assert "--list" in usage.stdout


def test_extend_table_piped_into_a_reader_that_stops(tmp_path):
    # `python -m plax.extend | head -0`: the reader has gone before the table is written.
    producer = subprocess.Popen([sys.executable, "-m", "plax.extend"], cwd=tmp_path,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    producer.stdout.close()
    _, err = producer.communicate(timeout=120)
    assert b"BrokenPipeError" not in err and b"Traceback" not in err, err.decode()
    assert producer.returncode == 0
