"""Time integration: coefficient tables, steppers, the step-size control and step reports."""

from lobatto.integrators.stepper import Stepper, get_scheme, plan_steps, stable_time_step
from lobatto.integrators.tables import MULTISTEP, RUNGE_KUTTA, SCHEMES, MultistepScheme, bdf_ext_coefficients

__all__ = ["MULTISTEP", "RUNGE_KUTTA", "SCHEMES", "MultistepScheme", "Stepper", "bdf_ext_coefficients",
           "get_scheme", "plan_steps", "stable_time_step"]
