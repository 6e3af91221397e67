"""The five papers' figure sets and reported numbers, as data (one TOML file per paper)."""

# The page compares a manifest's run parameters entry by entry (innet.provenance.run_spec_changed):
# the rest of it cannot change a result (innet.provenance.presentation_paths).
PRESENTATION = True
