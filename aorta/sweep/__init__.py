"""``aorta sweep``: run one benchmark command once per cell of a grid of settings, each in a fresh process.

Pure pieces (``grid``, ``variables``, ``command``, ``manifest``) are apart from the one module that starts
processes (``runner``); ``cli`` parses the command line.
"""
