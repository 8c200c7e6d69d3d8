"""Problem sets: the on-disk layout, seeded generators, the domain files, and expert plans from Fast Downward."""
