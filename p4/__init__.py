"""FavorQueue on a P4 switch (BMv2 simple_switch, v1model): programs, control plane, switch process."""
