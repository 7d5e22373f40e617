"""One gate from its options to its exit code, as pytest's hooks (aorta/gate/plugin.py) and ``aorta ab`` drive it:
options, checks before any run, the selection and order of a run, the fresh runs and their looks, the end."""
