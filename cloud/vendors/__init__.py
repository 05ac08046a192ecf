"""Model vendor adapters: each turns one vendor's stream into the chunk union and a neutral ModelTurn."""
