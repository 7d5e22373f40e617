"""Run history: every run kept in a database (SQLite by default, PostgreSQL by URL), trends per figure and
stack, the change points in each figure's series and the stack change that sits at each (issue 40)."""
