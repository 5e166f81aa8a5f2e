"""InquiTree inside inspect_ai: the task (``task``, registered through inspect's entry point), the
offline models it registers (``model``) and the export of recorded episodes as eval logs
(``export``). Imports inspect_ai; nothing else in InquiTree does."""
