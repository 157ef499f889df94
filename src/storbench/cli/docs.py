"""`storbench docs [NAME [SECTION]]`: the documents storbench's messages cite (the methodology, the plan reference,
security), printed from the installed package, whole or one section found by its heading (`storbench.manual`)."""

from __future__ import annotations

import argparse
from importlib.resources import files

from storbench.cli.common import _console, _write_output
from storbench.errors import UserError, closest


def document_text(name: str) -> str:
    """A document's Markdown: the package's copy, or the plan reference made from this storbench's schema."""
    from storbench.manual import DOCUMENTS

    document = next((d for d in DOCUMENTS if d.name == name), None)
    if document is None:
        close = closest(name, [d.name for d in DOCUMENTS])
        raise UserError(f"no document named {name!r}",
                        hint=f"did you mean {close}?" if close else "storbench docs lists them")
    if document.file is None:
        from storbench.reference import plan_reference_markdown

        return plan_reference_markdown()
    return (files("storbench") / "docs" / document.file).read_text(encoding="utf-8")


def cmd_docs(args: argparse.Namespace) -> int:
    from storbench.manual import DOCUMENTS, find_section

    if not args.name:
        console = _console()
        for document in DOCUMENTS:
            console.print(f"{document.name:<16} {document.about}", markup=False, soft_wrap=True)
        console.print("\nstorbench docs NAME prints one; storbench docs NAME SECTION one section, named by its heading "
                      "(storbench docs methodology 'bottleneck verdicts')", markup=False, soft_wrap=True)
        return 0
    text = document_text(args.name)
    section = " ".join(args.section)  # the words of a heading, quoted or not
    if section:
        found, close = find_section(text, section)
        if found is None:
            raise UserError(f"{args.name} has no section {section!r}",
                            hint=f"did you mean {' or '.join(close)}?" if close else
                            f"storbench docs {args.name} | grep '^#' lists its headings")
        text = found
    _write_output(text, "-")
    return 0


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("docs", help="print the methodology, the plan reference or the security notes (what "
                       "storbench's messages cite), whole or one section")
    p.add_argument("name", nargs="?", metavar="NAME", help="the document (none: list them)")
    p.add_argument("section", nargs="*", metavar="SECTION", help="one section, by its heading or its start "
                   "(bottleneck verdicts, workload.fio)")
    p.set_defaults(func=cmd_docs)
