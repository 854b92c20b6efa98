"""pycocotools' compressed RLE string decoder (maskApi.c rleFrString), written independently of segmux's
encoder so that tests can check segmux's strings against the published algorithm. Python 3 standard
library only."""


def decode_counts(counts):
    """The run lengths of a compressed `counts` string (alternating 0s and 1s, column-major)."""
    runs, p = [], 0
    while p < len(counts):
        x, k, more = 0, 0, True
        while more:
            c = ord(counts[p]) - 48
            x |= (c & 0x1f) << (5 * k)
            more = bool(c & 0x20)
            p += 1
            k += 1
            if not more and (c & 0x10):
                x |= -1 << (5 * k)
        if len(runs) > 2:
            x += runs[-2]
        runs.append(x)
    return runs
