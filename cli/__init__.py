"""The `mars` command.

Before any sub-command module imports Polars: a reducer's Polars allocator returns freed pages
at once (`mars.heap.return_polars_pages`: its RSS is then about its open windows' size), and
so does its PyArrow (`mars.heap.return_arrow_pages`: its spill files are written through it).
"""

import sys

from mars.heap import return_arrow_pages, return_polars_pages

if sys.argv[1:2] == ["reducer"]:
    return_polars_pages()
    return_arrow_pages()
