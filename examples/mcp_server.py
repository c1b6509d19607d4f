"""A small MCP server of a shop's stock, written with the official ``mcp`` SDK (``pip install
"voxwire[mcp]"``): the tools ``examples/mcp_agent.py`` gives its voice agent.

Over stdio (the agent starts it as a process)::

    python examples/mcp_server.py

or over streamable HTTP on 127.0.0.1 (the agent's ``--mcp-url http://127.0.0.1:8000/mcp``)::

    python examples/mcp_server.py --http 8000
"""

from __future__ import annotations

import argparse

from mcp.server.mcpserver import MCPServer

STOCK = {"blue kettle": 3, "red kettle": 0, "teapot": 12}

shop = MCPServer("shop-stock")


@shop.tool()
def stock_level(item: str) -> dict[str, object]:
    """How many of an item the shop has in stock."""
    count = STOCK.get(item.lower().strip())
    if count is None:
        return {"item": item, "known": False}
    return {"item": item, "known": True, "in_stock": count}


@shop.tool()
def reserve(item: str, customer: str) -> str:
    """Put one item aside for a customer (the agent asks the user before it calls this)."""
    return f"One {item} is put aside for {customer} until tomorrow evening."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP")
    args = parser.parse_args()
    if args.http is None:
        shop.run()
    else:
        shop.run("streamable-http", host="127.0.0.1", port=args.http)


if __name__ == "__main__":
    main()
