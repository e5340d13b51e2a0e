"""How long the log lines ``fleet export --log-lines`` writes may be: in a module of its own, so
that the command line declares its option without loading the encoder."""

DEFAULT_LINE_BYTES = 8000
#: Room for the header and a useful piece of payload.
MIN_LINE_BYTES = 256
#: Past this, the lines would be cut by the pipelines they are for (containerd: 16 KiB).
MAX_LINE_BYTES = 1024 * 1024
