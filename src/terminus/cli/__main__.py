"""`python -m terminus.cli`: the `terminus` command."""

from terminus.cli import main

main()
