"""Sphinx extension: regenerate the course pages from solutions/ before the book is read.

Runs on `config-inited`, before Jupyter Book's table of contents is resolved, so a plain
`jupyter-book build book/` always shows what solutions/ holds now. The work is done by
autograder.deliver.book; `course_variant` (student | instructor) comes from the build's _config file.
"""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # the book builds from a checkout, installed or not
    sys.path.insert(0, str(ROOT))


def _generate(app, config):
    from autograder.deliver import book
    book.generate(Path(app.srcdir), variant=config.course_variant, lang=config.course_language)
    config.myst_substitutions = {**book.substitutions(), **(config.myst_substitutions or {})}


def _drop_thebe(app, config):
    # Jupyter Book always loads sphinx-thebe (live code cells), and with this stack it writes its
    # `const THEBE_JS_URL` script twice per page: a JavaScript SyntaxError on every page. This
    # site has no live cells (launch buttons are off), so its handlers are disconnected.
    for event in ("env-before-read-docs", "doctree-resolved"):
        for listener in list(app.events.listeners.get(event, [])):
            if getattr(listener.handler, "__module__", "").startswith("sphinx_thebe"):
                app.disconnect(listener.id)


def _publish_translation(app, exception):
    """A translated site (book/<lang>/) is also copied into the English site's folder, as
    book/_build/html/<lang>/, so that the one folder to publish holds both and their language links
    ("zh_CN/intro.html", "../intro.html") work."""
    lang = app.config.course_language
    if exception is None and lang and app.builder.name == "html":
        import shutil
        target = ROOT / "book" / "_build" / "html" / lang
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(app.outdir, target)


def setup(app):
    app.add_config_value("course_variant", "student", "env")
    app.add_config_value("course_language", None, "env")   # a translated site (book/zh_CN/_config.yml)
    app.connect("config-inited", _generate, priority=100)  # before sphinx-external-toc (500)
    app.connect("config-inited", _drop_thebe)
    app.connect("build-finished", _publish_translation)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
