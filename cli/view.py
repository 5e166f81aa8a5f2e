"""``inquitree view``: serve the read-only viewer (``viewer/``) on this machine."""

from __future__ import annotations

import click

from inquitree.boundary.text import install_extra
from inquitree.cli.common import FiniteFloat, db_option, echo
from inquitree.cli.tables import (
    complete_case_option,
    fixed_papers_option,
    interval_settings,
    joint_ranks_option,
    scope_options,
    warehouse_option,
)


@click.command()
@db_option
@warehouse_option
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address to listen on (loopback: this machine only)."
)
@click.option("--port", default=8765, show_default=True, type=click.IntRange(1, 65535))
@click.option(
    "--allowed-host",
    "allowed",
    multiple=True,
    metavar="NAME",
    help="Another name the viewer answers to (besides loopback names and --host): requests naming any other "
    "Host are refused, so that another site cannot reach the viewer through DNS rebinding.",
)
@click.option(
    "--sync/--no-sync",
    default=True,
    show_default=True,
    help="Sync the warehouse from the store first, and again when pages find the store moved on.",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the viewer in a browser.")
@click.option(
    "--stale-after",
    type=FiniteFloat(min=1),
    default=300.0,
    show_default=True,
    metavar="SECONDS",
    help="A campaign cell with no end and nothing recorded for this long is shown as interrupted.",
)
@fixed_papers_option
@joint_ranks_option
@complete_case_option
@scope_options
@click.option(
    "--label",
    "label_kind",
    type=click.Choice(["moves", "conclusions"]),
    help="Also serve /label: a sample of the --suite's moves or conclusions to label in the browser "
    "(loopback only; the link carries a write token), the sample inquitree label draws.",
)
@click.option("--sample", "label_size", type=click.IntRange(min=1), help="With --label: how many items.")
@click.option("--seed", "label_seed", type=int, default=0, show_default=True, help="With --label: the sample's seed.")
@click.option("--agent", "label_agent", help="With --label: only this agent's episodes.")
@click.option("--labeller", help="With --label: who answers (default: $INQUITREE_LABELLER, else your login name).")
def view(
    db_url,
    warehouse_path,
    host,
    port,
    allowed,
    sync,
    open_browser,
    stale_after,
    fixed_papers,
    joint_ranks,
    complete_case,
    suites,
    one_off,
    label_kind,
    label_size,
    label_seed,
    label_agent,
    labeller,
) -> None:
    """A local, read-only web viewer: campaigns as they run, episodes, trees with an episode's path,
    search over every transcript, two agents side by side, and the report's figures."""
    import importlib.util

    if importlib.util.find_spec("starlette") is None or importlib.util.find_spec("uvicorn") is None:
        raise click.ClickException(f"the viewer needs its extra: {install_extra('view')}")
    from pathlib import Path

    import uvicorn

    from inquitree.viewer.app import create_app
    from inquitree.warehouse import default_warehouse_path, kept_only_if_used

    labelling = _labelling(db_url, host, suites, label_kind, label_size, label_seed, label_agent, labeller)
    path = warehouse_path or default_warehouse_path()
    _port_free(host, port)  # before anything is built or said: a port in use is one line, not a URL
    if sync:  # no store here: one line, and no warehouse file is made beside it
        from inquitree.events import EventStore

        EventStore(db_url, create=False, read_only=True).close()
    if sync and not Path(path).exists():
        with kept_only_if_used(path) as wh:  # an empty warehouse of this store, read until the sync publishes
            wh.bind(db_url)
    app = create_app(
        path,
        db_url,
        sync,
        stale_after,
        host=host,
        extra_hosts=allowed,
        write_index=sync,
        index_in_background=True,
        settings=interval_settings(fixed_papers, joint_ranks, complete_case),
        scope=(tuple(suites), one_off),
        labelling=labelling,
    )
    if sync and app.state.viewer.catch_up(force=True):  # the pages answer meanwhile, and say so
        echo(f"{path}: loading the store's newer events in the background", err=True)
    where = f"http://{host}:{port}/"
    loopback = host in ("127.0.0.1", "localhost", "::1")
    echo(
        f"InquiTree viewer on {where} (read-only; "
        + ("this machine only)" if loopback else "REACHABLE FROM OTHER MACHINES: --host 127.0.0.1 keeps it local)"),
        err=True,
    )
    if labelling is not None:  # the one link that can write: the person who started the viewer has it
        where = f"{where}label?token={labelling.token}"
        echo(f"labelling {label_kind} of {suites[0]} as {labelling.labeller}: {where}", err=True)
    if open_browser:
        import webbrowser

        webbrowser.open(where)

    class Server(uvicorn.Server):
        def handle_exit(self, sig, frame) -> None:  # Ctrl-C: the pages' event streams end, then the server
            app.state.viewer.stopping.set()
            super().handle_exit(sig, frame)

    Server(uvicorn.Config(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=5)).run()
    app.state.viewer.close()  # a first index build stopped half way removes its temporary file


def _port_free(host: str, port: int) -> None:
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise click.ClickException(
                f"cannot listen on {host}:{port} ({exc.strerror or exc}): choose another port with --port"
            ) from None


def _labelling(db_url, host, suites, kind, size, seed, agent, labeller):
    """What ``--label`` labels, checked before anything starts; None without it."""
    if kind is None:
        if size is not None or agent or labeller:
            raise click.UsageError("--sample, --agent and --labeller are for --label")
        return None
    from inquitree.cli.label import labeller_name
    from inquitree.viewer.app import LOOPBACK_HOSTS
    from inquitree.viewer.pages.label import Labelling

    if host not in LOOPBACK_HOSTS:
        raise click.UsageError(
            f"--label writes to the store: serve it on a loopback address (--host 127.0.0.1), not {host}"
        )
    if len(suites) != 1 or size is None:
        raise click.UsageError("--label needs the campaign and the sample's size: --suite NAME --sample N")
    return Labelling(db_url, kind.removesuffix("s"), suites[0], agent, size, seed, labeller_name(labeller))
