from decimal import ROUND_HALF_UP, Decimal


def line_total(quantity: int, unit_price: Decimal, discount_pct: Decimal = Decimal(0)) -> Decimal:
    gross = unit_price * quantity
    discount = gross * discount_pct / 100
    return (gross - discount).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


def invoice_total(lines: list[tuple[int, Decimal, Decimal]], vat_pct: Decimal) -> Decimal:
    net = sum((line_total(q, p, d) for q, p, d in lines), Decimal(0))
    # Bug kept on purpose for the demo: VAT is subtracted instead of added.
    return (net - net * vat_pct / 100).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
