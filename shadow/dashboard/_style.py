"""The dashboard page's stylesheet (inline in the page: the CSP allows no external styles)."""

from __future__ import annotations

from typing import Final

STYLE: Final = """
:root { --ink: #212529; --muted: #6c757d; --line: #dee2e6; --legacy: #c8553d; --structured: #2a6f97; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       color: var(--ink); background: #f4f5f7; }
header, main, footer { max-width: 1480px; margin: 0 auto; padding: 0 24px; }
header { padding-top: 20px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 0 0 2px; }
.facts { color: var(--muted); margin: 0 0 12px; }
.subtitle { background: #fff3cd; border: 1px solid #e0c36a; border-radius: 6px; padding: 10px 14px; margin: 10px 0;
            font-weight: 600; }
.notice { background: #e7f1fa; border: 1px solid #b6d4ea; border-radius: 6px; padding: 8px 14px; margin: 8px 0; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(230px, 1fr)); gap: 12px; margin: 12px 0; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 12px 16px; }
.card .label { color: var(--muted); font-size: 13px; }
.card .value { font-size: 24px; font-weight: 650; }
.card .detail { color: var(--muted); font-size: 13px; }
.legacy { color: var(--legacy); } .structured { color: var(--structured); }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(620px, 1fr)); gap: 16px; }
section.panel { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 14px 16px;
                min-width: 0; }
section.wide { grid-column: 1 / -1; }
.explains { color: var(--muted); font-size: 13px; margin: 0 0 6px; }
.chart { width: 100%; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { color: var(--muted); font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.bad { color: #b00020; font-weight: 600; } .good { color: #2d6a4f; }
footer { color: var(--muted); font-size: 13px; padding-top: 12px; padding-bottom: 28px; }
code { font-size: 12.5px; }
#recommendations { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 10px 16px;
                   margin: 10px 0; }
ul.recs { list-style: none; margin: 4px 0 0; padding: 0; }
li.rec { padding: 4px 0; border-bottom: 1px solid var(--line); }
li.rec:last-child { border-bottom: none; }
li.rec .tool { font-weight: 650; }
.action { display: inline-block; border-radius: 4px; padding: 0 6px; font-size: 13px; font-weight: 650; color: #fff; }
.action.raise { background: #2d6a4f; } .action.hold { background: #6c757d; } .action.done { background: #2a6f97; }
.action.fix_rules { background: #b26a00; } .action.rollback { background: #b00020; }
.muted { color: var(--muted); font-weight: normal; }
.table-wrap { overflow-x: auto; }
td { overflow-wrap: break-word; }
details { border-top: 1px solid var(--line); padding: 6px 0; }
summary { cursor: pointer; }
h3 { font-size: 14px; margin: 10px 0 4px; }
.pair { display: grid; grid-template-columns: 1fr 1fr; gap: 8px; margin-bottom: 6px; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f8f9fa; border: 1px solid var(--line);
      border-radius: 4px; padding: 6px 8px; margin: 2px 0; font-size: 12px; }
"""
