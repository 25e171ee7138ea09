"""`terminus view`: episodes as static HTML a person can read, from a trajectories file, an eval cell or a run folder.

The pages need no server and load nothing from outside (inline CSS, one inline script the page's Content Security
Policy pins by hash), so they open offline in any browser and in JupyterLab. Everything shown from a record is
escaped: command output and model replies are untrusted text, and stay text.

`read` finds and checks what to show (`load`), `site` renders it through the Jinja templates in `templates/` and
writes the pages (`write_site`, the one entry point, named here for `terminus view`).
"""

from terminus.view.site import write_site

__all__ = ["write_site"]
