"""Code search over a store: the line index, regex narrowing and full scans."""
