"""The `recipe-bot` command line: one click group whose subcommands live beside the stage they drive."""
from __future__ import annotations

import importlib

import click

from bot.core.cli_guard import HELP_OPTIONS, one_line
from bot.core.click_messages import catalogue_form
from bot.core.messages import Message, Refusal, msg
from bot.core.settings import SettingsError, setting, settings_table

# Subcommands are imported only when called, so `recipe-bot plan` never pays for matplotlib
# and a runner host never imports the control plane.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "handle": ("bot.control.handle", "handle_cmd"),
    "plan": ("bot.plan.cli", "plan_cmd"),
    "run": ("bot.runner.cli", "run_cmd"),
    "report": ("bot.report.cli", "report_cmd"),
    "demo": ("bot.demo", "demo_cmd"),
    "slurm-cancel": ("bot.runner.slurm.backend", "slurm_cancel_cmd"),
    "checklist": ("bot.checklist.cli", "checklist_cmd"),
    "serve": ("bot.serve.cli", "serve_cmd"),
    "e2e-cases": ("bot.recipes.nodeids", "e2e_cases_cmd"),
    "ci": ("bot.cli", "ci_cmd"),
}

# What the shipped workflows (and the docs' generators) call: one step each, never a `python -m` path.
CI_SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "required-commands": ("bot.report.gate_runs", "required_commands_cmd"),
    "plan-failed": ("bot.control.gate_events", "plan_failed_cmd"),
    "retry-matrix": ("bot.runner.retry", "retry_matrix_cmd"),
    "template-results": ("bot.report.template_results", "template_results_cmd"),
    "commands-doc": ("bot.control.help_docs", "commands_doc_cmd"),
    "settings-doc": ("bot.cli", "settings_doc_cmd"),
}

SHORT_HELP = {
    "handle": "Act on one GitHub event (the Actions entry point).",
    "plan": "Show which recipes a change touches and the GPU jobs it needs.",
    "run": "Run one planned job on this host (or through Slurm).",
    "report": "Collect results, compare with the base branch, render and post.",
    "demo": "Run the whole loop on this machine against the sandbox and the CPU engine.",
    "slurm-cancel": "Cancel a PR's recipe-bot jobs on a Slurm cluster (/cancel, a superseding push).",
    "checklist": "Verify a PR's PR_REVIEW_CHECKLIST sign-off (check recipe-bot / sign-off).",
    "serve": "Serve GitHub App webhooks: a durable queue, the same handler as Actions.",
    "e2e-cases": "Print a harness suite's cases from pytest --collect-only -q node ids.",
    "ci": "The steps the GitHub workflows run (required commands, retries, the merge gate's plan failure).",
    "required-commands": "Print the commands the merge gate requires (gate.required), one a line.",
    "plan-failed": "Fail the merge gate on a commit whose plan job failed, with the planner's reason.",
    "retry-matrix": "Print the matrix of jobs to run again after an infrastructure failure.",
    "template-results": "Turn the bmk_* artifacts of InferenceX's benchmark templates into the report's results.",
    "commands-doc": "Print docs/commands.md from the command registry.",
    "settings-doc": "Print docs/settings.md (every RECIPE_BOT_* variable) from the settings model.",
}


def _debug_enabled() -> bool:
    # RECIPE_BOT_DEBUG is read here, at the edge where an unhandled error leaves the command: it decides
    # how that error is shown, so no command can pass it in
    try:
        return bool(setting("DEBUG"))
    except SettingsError:  # asked while an error is already on its way out: a bad value means no
        return False


def _in_both_languages(exc: click.ClickException) -> click.ClickException:
    """The error with its Chinese line under the English one.

    Commands raise their refusals where the fact is found, as catalogue messages (bot.core.messages);
    click's own usage errors are rebuilt from their parts (bot/core/click_messages.py). The Chinese line
    is added here once for all; an error with no catalogue form (a plug-in's own words) is shown as it is.
    """
    if type(exc).show not in (click.ClickException.show, click.UsageError.show):
        return exc  # an error that shows something else (click's help for a bare command)
    message = catalogue_form(exc)
    if message is None:
        return exc
    both = message.render("en") + "\n" + msg("Error: %(message)s", message=message).render("zh")
    out = click.UsageError(both, exc.ctx) if isinstance(exc, click.UsageError) else click.ClickException(both)
    out.exit_code = exc.exit_code
    return out


class LazyGroup(click.Group):
    subcommands = SUBCOMMANDS

    def make_context(self, info_name, args, parent=None, **extra):  # noqa: ANN001, ANN201 - click's signature
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.ClickException as exc:
            raise _in_both_languages(exc) from None

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except click.ClickException as exc:
            raise _in_both_languages(exc) from None
        except (click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as exc:
            if _debug_enabled():
                raise
            raise click.ClickException(one_line(exc)) from None

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(self.subcommands)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.subcommands:
            return None
        module_name, attr = self.subcommands[name]
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.startswith("bot"):
                return _unavailable(name, msg("%(module)s is not part of this build", module=module_name))
            raise
        return getattr(module, attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, SHORT_HELP.get(name, "")) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _unavailable(name: str, why: Message) -> click.Command:
    @click.command(name=name, help=SHORT_HELP.get(name), context_settings=HELP_OPTIONS)
    def command() -> None:
        raise Refusal(why)

    return command


@click.group(cls=LazyGroup, context_settings=HELP_OPTIONS)
@click.version_option(package_name="recipe-bot")
def main() -> None:
    """recipe-bot: PR commands to GPU benchmark runs, with one bilingual report."""


class CiGroup(LazyGroup):
    subcommands = CI_SUBCOMMANDS


@click.group("ci", cls=CiGroup, context_settings=HELP_OPTIONS)
def ci_cmd() -> None:
    """The steps the GitHub workflows run: each reads files the earlier steps wrote and prints what GitHub reads."""


@click.command("settings-doc", context_settings=HELP_OPTIONS)
def settings_doc_cmd() -> None:
    """Print docs/settings.md (`recipe-bot ci settings-doc > docs/settings.md`)."""

    click.echo(settings_table(), nl=False)
