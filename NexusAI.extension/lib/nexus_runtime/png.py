"""Reading a PNG's size from its header (no imaging library inside Revit)."""
import struct

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(data):
    """(width, height) from the IHDR chunk; ValueError when `data` is not a PNG."""
    data = bytes(bytearray(data[:24]))
    if len(data) < 24 or data[:8] != PNG_SIGNATURE or data[12:16] != b"IHDR":
        raise ValueError("not a PNG file")
    width, height = struct.unpack(">II", data[16:24])
    return int(width), int(height)


def fit_direction(width, height):
    """Which side of a width x height view Revit's PixelSize should bound: the longer one."""
    return "Vertical" if height > width > 0 else "Horizontal"
