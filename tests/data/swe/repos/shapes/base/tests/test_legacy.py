from shapes import scale


def test_scale_keeps_length():
    assert len(scale([1, 2, 3], 2)) == 3
