"""sch_favor: the kernel qdisc, its tc plugin, tools and tests (Python here only for tests and tools)."""
