"""The agent under test: a shop assistant with a refund tool that needs the user's approval
above a limit, and an input guardrail that refuses card numbers."""

from __future__ import annotations

from voxwire.agents import GuardrailResult, RealtimeAgent, ToolCall, function_tool, input_guardrail

REFUND_LIMIT_EUR = 50.0
REFUSAL = "Please never say card numbers here; I do not need them."
refunds: list[tuple[str, float]] = []  # what the (pretend) payment backend was asked to do


def needs_approval(call: ToolCall) -> bool:
    """Refunds above the limit wait for the user's approval."""
    amount = call.arguments.get("amount_eur", 0)
    return isinstance(amount, int | float) and amount > REFUND_LIMIT_EUR


@function_tool(needs_approval=needs_approval)
def refund(order_id: str, amount_eur: float) -> str:
    """Refund part or all of an order.

    Args:
        order_id: the order number.
        amount_eur: how much to refund, in euros.
    """
    refunds.append((order_id, amount_eur))
    return f"refunded {amount_eur:.2f} EUR on order {order_id}"


@input_guardrail
def no_card_numbers(agent: RealtimeAgent, text: str) -> GuardrailResult:
    digits = sum(ch.isdigit() for ch in text)
    return GuardrailResult(digits >= 12, {"digits": digits})


def shop_assistant() -> RealtimeAgent:
    return RealtimeAgent(
        name="Shop",
        instructions="You help customers of an online shop. Refund orders with the refund tool.",
        tools=[refund],
        input_guardrails=[no_card_numbers],
    )
