"""Reading a PNG's size from its header (no imaging library inside Revit).

Works on bytearrays so it behaves the same whatever IronPython's str/bytes return from a binary read.
"""
PNG_SIGNATURE = bytearray(b"\x89PNG\r\n\x1a\n")
IHDR = bytearray(b"IHDR")


def png_size(data):
    """(width, height) from the IHDR chunk; ValueError when `data` is not a PNG."""
    header = bytearray(data[:24])
    if len(header) < 24 or header[:8] != PNG_SIGNATURE or header[12:16] != IHDR:
        raise ValueError("not a PNG file")
    return _big_endian(header[16:20]), _big_endian(header[20:24])


def _big_endian(four):
    return (four[0] << 24) | (four[1] << 16) | (four[2] << 8) | four[3]


def fit_direction(width, height):
    """Which side of a width x height view Revit's PixelSize should bound: the longer one."""
    return "Vertical" if height > width > 0 else "Horizontal"
