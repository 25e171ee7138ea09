"""From result tables to figures, one module per notebook (`corpus`, `training`, `evaluation`, `delegation`,
`case_study`), what they share (`notebook`: the folders, the tables by name, saving a figure; `grid`: the eval grid's
bars). Notebooks call these and nothing heavier."""
