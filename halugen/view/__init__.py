"""``halugen view``: a read-only page over a store's samples, on this machine only.

server.py is the app (the page and its JSON API), serving.py starts and stops it, reader.py
reads the store (on the file, or through the run that holds it), story.py shapes one seed's
story for the page, worddiff.py marks the words a hallucination changed.
"""
