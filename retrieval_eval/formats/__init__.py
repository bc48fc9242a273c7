"""How values are written, below every layer that writes them: numbers (:mod:`.numbers`),
JSON documents (:mod:`.jsonio`), CSV cells (:mod:`.csv_cells`) and text inside Markdown
(:mod:`.markdown_text`). The domain and reports both use them; they import nothing of the package."""
