"""The five papers' figure sets and reported numbers, as data (one TOML file per paper)."""
