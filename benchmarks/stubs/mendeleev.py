"""Minimal stand-in for the mendeleev package: DeePMD-kit only asks it for atomic numbers here."""
from types import SimpleNamespace

SYMBOLS = ("H He Li Be B C N O F Ne Na Mg Al Si P S Cl Ar K Ca Sc Ti V Cr Mn Fe Co Ni Cu Zn "
           "Ga Ge As Se Br Kr Rb Sr Y Zr Nb Mo Tc Ru Rh Pd Ag Cd In Sn Sb Te I Xe")
_Z = {s: i + 1 for i, s in enumerate(SYMBOLS.split())}


def element(symbol):
    if symbol not in _Z:
        raise ValueError(symbol)
    return SimpleNamespace(atomic_number=_Z[symbol], symbol=symbol)
