"""The user's installer configuration (pip's, uv's) read the way each installer reads it."""
