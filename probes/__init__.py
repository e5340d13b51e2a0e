"""Hardware and software probes: everything in hwadvisor that touches the machine."""
