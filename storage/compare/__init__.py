"""The stored traces of two selections counted into cells for the comparison, and the tasks that moved most."""
