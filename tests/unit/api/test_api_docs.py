"""docs/api.md's examples run as written (doctest), against a fresh directory each run."""

import doctest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_the_api_page_examples_run(tmp_path):
    result = doctest.testfile(
        str(ROOT / "docs" / "api.md"),
        module_relative=False,
        globs={"workdir": str(tmp_path)},
        optionflags=doctest.ELLIPSIS,
        report=True,
    )
    assert result.attempted >= 20
    assert result.failed == 0


def test_import_odfweb3_loads_no_command_module():
    # The CLI starts with `import odfweb3`: the API's names load on first use (PEP 562).
    import subprocess
    import sys

    code = (
        "import sys, odfweb3; odfweb3.__version__; "
        "print(sorted(m for m in sys.modules if m.startswith('odfweb3')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "['odfweb3']"
    code = (
        "import sys; from odfweb3 import api; api.Hooks; "
        "print(sorted(m for m in sys.modules if m.startswith('odfweb3')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "['odfweb3', 'odfweb3.api', 'odfweb3.api.hooks']"


def test_the_curated_names_resolve_whatever_was_imported_before():
    # odfweb3.publish (the pipeline package) loaded first must not hide api.publish.
    import odfweb3.publish.execute  # noqa: F401
    from odfweb3 import api

    for name in api.__all__:
        assert getattr(api, name) is not None, name
    assert callable(api.publish) and callable(api.status)
    assert sorted(dir(api)) == sorted(api.__all__)
