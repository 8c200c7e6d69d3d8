"""The symbolic core: PDDL tasks, successor generation, plan files and replay."""
