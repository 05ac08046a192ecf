"""BCF (buildingSMART's BIM Collaboration Format) archives: reading and writing them, and findings as BCF topics."""
