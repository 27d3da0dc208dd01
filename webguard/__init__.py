"""HTTP plumbing every web area shares: request bodies read under a size cap, login throttling,
and the public routes Gradio opens that the app closes. Imports nothing of the project."""
