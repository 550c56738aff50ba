"""What every study shares: the results store (`results`), the docs sections (`docs_sections`), table cells
(`tables`) and the command line (`script_cli`). Nothing here measures."""
