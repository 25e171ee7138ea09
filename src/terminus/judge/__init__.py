"""The judge: rubric LLM judge, deterministic fact checker, and the Scorer that combines them."""
