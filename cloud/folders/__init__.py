"""The people's folders on a server: the root holding them (roots.py) and who may read or write which path in them
(access.py). Batches, a session's reference models and the admin's project folders all resolve paths here."""
