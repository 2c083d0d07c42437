"""Time integration: coefficient tables and steppers."""

from lobatto.integrators.stepper import Stepper, get_scheme, plan_steps, stable_time_step
from lobatto.integrators.tables import SCHEMES

__all__ = ["SCHEMES", "Stepper", "get_scheme", "plan_steps", "stable_time_step"]
