// Typed quantities for trainperf: bytes, FLOP and seconds are base units of one
// Boost.Units system, so adding bytes to seconds does not compile. GB (1e9 B) and
// GiB (2^30 B) are distinct quantity types; converting between them is explicit.
#pragma once

#include <boost/units/base_dimension.hpp>
#include <boost/units/base_unit.hpp>
#include <boost/units/derived_dimension.hpp>
#include <boost/units/make_system.hpp>
#include <boost/units/quantity.hpp>
#include <boost/units/unit.hpp>
#include <boost/units/physical_dimensions/time.hpp>
#include <boost/units/base_units/si/second.hpp>

namespace trainperf {

namespace units_detail {
namespace bu = boost::units;

// Ordinals 1701/1702 are arbitrary but must not clash with Boost's own (<= 100).
struct data_base_dimension : bu::base_dimension<data_base_dimension, 1701> {};
struct work_base_dimension : bu::base_dimension<work_base_dimension, 1702> {};
using data_dimension = data_base_dimension::dimension_type;
using work_dimension = work_base_dimension::dimension_type;

struct byte_base_unit : bu::base_unit<byte_base_unit, data_dimension, 1701> {
    static constexpr const char* name() { return "byte"; }
    static constexpr const char* symbol() { return "B"; }
};
struct flop_base_unit : bu::base_unit<flop_base_unit, work_dimension, 1702> {
    static constexpr const char* name() { return "floating-point operation"; }
    static constexpr const char* symbol() { return "FLOP"; }
};
// Distinct base units for the decimal and binary gigabyte: a quantity in GB is a
// different type from one in GiB, and from one in bytes.
struct gigabyte_base_unit : bu::base_unit<gigabyte_base_unit, data_dimension, 1703> {
    static constexpr const char* name() { return "gigabyte"; }
    static constexpr const char* symbol() { return "GB"; }
};
struct gibibyte_base_unit : bu::base_unit<gibibyte_base_unit, data_dimension, 1704> {
    static constexpr const char* name() { return "gibibyte"; }
    static constexpr const char* symbol() { return "GiB"; }
};

using system = bu::make_system<byte_base_unit, flop_base_unit, bu::si::second_base_unit>::type;
using gb_system = bu::make_system<gigabyte_base_unit>::type;
using gib_system = bu::make_system<gibibyte_base_unit>::type;

using byte_unit = bu::unit<data_dimension, system>;
using flop_unit = bu::unit<work_dimension, system>;
using second_unit = bu::unit<bu::time_dimension, system>;
using dimensionless_unit = bu::unit<bu::dimensionless_type, system>;
using flop_rate_unit = bu::unit<bu::derived_dimension<work_base_dimension, 1, bu::time_base_dimension, -1>::type, system>;
using byte_rate_unit = bu::unit<bu::derived_dimension<data_base_dimension, 1, bu::time_base_dimension, -1>::type, system>;
using flop_per_byte_unit = bu::unit<bu::derived_dimension<work_base_dimension, 1, data_base_dimension, -1>::type, system>;
using hertz_unit = bu::unit<bu::derived_dimension<bu::time_base_dimension, -1>::type, system>;
using gigabyte_unit = bu::unit<data_dimension, gb_system>;
using gibibyte_unit = bu::unit<data_dimension, gib_system>;
}  // namespace units_detail

// The quantity types used throughout the library (all double-valued).
using bytes = boost::units::quantity<units_detail::byte_unit, double>;
using flops = boost::units::quantity<units_detail::flop_unit, double>;          // an amount of work
using seconds = boost::units::quantity<units_detail::second_unit, double>;
using flop_rate = boost::units::quantity<units_detail::flop_rate_unit, double>; // FLOP/s
using byte_rate = boost::units::quantity<units_detail::byte_rate_unit, double>; // B/s
using arithmetic_intensity = boost::units::quantity<units_detail::flop_per_byte_unit, double>;
using hertz = boost::units::quantity<units_detail::hertz_unit, double>;
using gigabytes = boost::units::quantity<units_detail::gigabyte_unit, double>;  // 1 GB = 1e9 B
using gibibytes = boost::units::quantity<units_detail::gibibyte_unit, double>;  // 1 GiB = 2^30 B

inline constexpr double bytes_per_gb = 1e9;
inline constexpr double bytes_per_gib = 1073741824.0;  // 2^30

// Unit constants: multiply a number by one of these to make a quantity.
inline constexpr units_detail::byte_unit byte_u{};
inline constexpr units_detail::flop_unit flop_u{};
inline constexpr units_detail::second_unit second_u{};

// Constructors from plain numbers, usable in constant expressions.
constexpr bytes bytes_of(double b) { return bytes::from_value(b); }
constexpr bytes kilobytes_of(double kb) { return bytes::from_value(kb * 1e3); }
constexpr bytes megabytes_of(double mb) { return bytes::from_value(mb * 1e6); }
constexpr bytes mebibytes_of(double mib) { return bytes::from_value(mib * 1048576.0); }
constexpr bytes gigabytes_of(double gb) { return bytes::from_value(gb * bytes_per_gb); }
constexpr bytes gibibytes_of(double gib) { return bytes::from_value(gib * bytes_per_gib); }
constexpr bytes terabytes_of(double tb) { return bytes::from_value(tb * 1e12); }
constexpr flops flops_of(double f) { return flops::from_value(f); }
constexpr seconds seconds_of(double s) { return seconds::from_value(s); }
constexpr seconds milliseconds_of(double ms) { return seconds::from_value(ms * 1e-3); }
constexpr seconds microseconds_of(double us) { return seconds::from_value(us * 1e-6); }
constexpr flop_rate tflops_per_second(double t) { return flop_rate::from_value(t * 1e12); }
constexpr byte_rate gb_per_second(double gbps) { return byte_rate::from_value(gbps * bytes_per_gb); }
constexpr byte_rate tb_per_second(double tbps) { return byte_rate::from_value(tbps * 1e12); }
constexpr hertz megahertz(double mhz) { return hertz::from_value(mhz * 1e6); }

// Explicit conversions between bytes, GB and GiB.
constexpr gigabytes to_gb(bytes b) { return gigabytes::from_value(b.value() / bytes_per_gb); }
constexpr gibibytes to_gib(bytes b) { return gibibytes::from_value(b.value() / bytes_per_gib); }
constexpr bytes to_bytes(gigabytes g) { return bytes::from_value(g.value() * bytes_per_gb); }
constexpr bytes to_bytes(gibibytes g) { return bytes::from_value(g.value() * bytes_per_gib); }

}  // namespace trainperf
