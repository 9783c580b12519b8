"""Reports people read: HTML with inline SVG plots, CSV/Parquet exports."""
