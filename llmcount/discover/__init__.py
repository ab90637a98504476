"""A maintainer tool: ``python -m llmcount.discover MODEL_TYPE [-o PATH]`` drafts a family record from the model
code (transformers on the meta device) and checks it with llmcount's reader. Never imported by the rest of
llmcount; it needs torch and transformers (``pip install '.[test]'``), imported only when it runs."""
