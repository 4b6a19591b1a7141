"""Where records live: the typed key space (:mod:`.tree`) and the catalog's layout on it (:mod:`.layout`)."""
