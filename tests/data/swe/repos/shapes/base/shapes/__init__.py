from shapes.scale import scale

__all__ = ["scale"]
