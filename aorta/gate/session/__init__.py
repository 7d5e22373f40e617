"""One gate from its options to its exit code: the steps pytest's hooks (``gate/plugin.py``) and ``aorta ab`` hand over to."""
