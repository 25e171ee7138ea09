from ledger.money import add, apply_discount, split

__all__ = ["add", "apply_discount", "split"]
