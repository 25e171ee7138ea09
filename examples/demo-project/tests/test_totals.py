from decimal import Decimal

from invoicing.totals import invoice_total, line_total


def test_line_total_plain():
    assert line_total(3, Decimal("2.50")) == Decimal("7.50")


def test_line_total_discount():
    assert line_total(4, Decimal("10.00"), Decimal("25")) == Decimal("30.00")


def test_invoice_total_adds_vat():
    lines = [(1, Decimal("100.00"), Decimal(0)), (2, Decimal("5.00"), Decimal(0))]
    assert invoice_total(lines, Decimal("20")) == Decimal("132.00")


def test_invoice_total_empty():
    assert invoice_total([], Decimal("20")) == Decimal("0.00")
