"""The YAML config shared by the CLI and the DAG factory: its models, where the file is found, and
'did you mean' for unknown names."""
