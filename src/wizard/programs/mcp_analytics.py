"""MCP analytics: capture the tool calls of an MCP server the project builds."""

from wizard.programs.types import (
    AbortCase,
    Fit,
    McpProof,
    Orchestration,
    ProgramConfig,
    TaskType,
)

PLAN = Orchestration(
    seed_instructions=(
        "Enqueue `inspect` first; then `install` and `wrap`, each depending on `inspect` "
        "only, so they run in parallel."
    ),
    task_types=(
        TaskType(
            "inspect",
            "Check the stop conditions: an MCP server, its language, its entry point.",
            "Check the skill's stop conditions. If one holds, write its stop line exactly. "
            "Otherwise change nothing and report done, with a handoff naming the language, "
            "the package manager and the file and line where the server is constructed.",
        ),
        TaskType(
            "install",
            "Install the PostHog MCP wrapper with the project's package manager.",
            "Do step 1 of the skill with the package manager named in the handoff.",
        ),
        TaskType(
            "wrap",
            "Wrap the server where it is constructed; the key comes from the environment.",
            "Do steps 2, 3 and 4 of the skill at the place named in the handoff.",
        ),
    ),
)


MCP_ANALYTICS = ProgramConfig(
    id="mcp-analytics",
    label="mcp-analytics",
    description="Add PostHog analytics to the MCP server this project builds.",
    skill="mcp-analytics",
    spinner_message="Adding analytics to your MCP server...",
    success_message="MCP analytics set up",
    docs_url="https://posthog.com/docs/mcp-analytics",
    orchestration=PLAN,
    proofs=(
        McpProof(
            "a tool call is captured",
            entry_file=".posthog/mcp-probe.json",
            key_variable="POSTHOG_API_KEY",
            host_variable="POSTHOG_HOST",
        ),
    ),
    fits=Fit(
        languages=("python", "javascript"),
        signals=(
            "modelcontextprotocol",
            "fastmcp",
            "mcp.server",
            "mcp[",
            '"mcp"',
            "mcp>",
            "mcp=",
            "mcpserver",
        ),
        lacking="the project builds no MCP server (no MCP SDK in its code or manifests)",
        found="the project builds an MCP server",
        hints=("mcp", "server", "tool"),
    ),
    abort_cases=(
        AbortCase(
            match=r"^unsupported language for mcp analytics$",
            message="Unsupported language for MCP analytics",
            body=(
                "MCP analytics supports TypeScript/JavaScript servers (`@posthog/mcp`) and Python "
                "servers (`posthog.mcp`). This project's MCP server is written in another "
                "language, so nothing was changed."
            ),
        ),
        AbortCase(
            match=r"^no mcp server found$",
            message="No MCP server found",
            body=(
                "MCP analytics instruments an MCP server, and no MCP server was found in this "
                "project. If you just want PostHog product analytics, run `npx @posthog/wizard` "
                "instead."
            ),
        ),
        AbortCase(
            match=r"^could not locate the server entry point$",
            message="Could not locate the MCP server entry point",
            body=(
                "The wizard found MCP code but couldn't find where the server is constructed or "
                "requests are dispatched. Point the skill at the file that creates the server "
                "(for example by opening an issue with its path) and run this program again."
            ),
        ),
    ),
)
