"""The researcher area's login: its one user name (the password is the app's, app.py). Here, apart
from the Gradio area that checks it (analysis.dashboard), so that the app's start lines can name it
without loading Gradio."""

RESEARCHER_USER = "researcher"
