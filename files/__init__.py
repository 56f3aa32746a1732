"""Files written so that a reader, a crash or a `kill -9` never sees half of one."""
